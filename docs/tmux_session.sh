#!/usr/bin/env bash
# Drive ckpt in a real terminal (tmux) as a user would and save what the screen shows:
#   docs/screens/ls_directory.txt      `ckpt ls` on a directory of runs
#   docs/screens/complete_key.txt      tab completion of a tensor key for `ckpt show`
#   docs/screens/verify_progress.txt   a progress bar during a long verify
# Usage: docs/tmux_session.sh [BIG_CHECKPOINT]   (default: benchmarks' BERT-like checkpoint)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/docs/screens
BIG=${1:-/tmp/ckpt-bench/bert/model.ckpt-1000}
BIN=$(dirname "$(command -v ckpt)")
S=ckpt-demo
tmux kill-session -t $S 2>/dev/null || true
tmux new-session -d -s $S -x 110 -y 30 "env -i HOME=$HOME TERM=xterm-256color PATH=$BIN:/usr/bin:/bin bash --norc --noprofile"
send() { tmux send-keys -t $S "$@"; }
capture() { tmux capture-pane -p -t $S | sed -e 's/[[:space:]]*$//' | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' > "$OUT/$1"; }
sleep 0.5
send "PS1='$ '; cd $ROOT; source completions/ckpt.bash; clear" Enter
sleep 0.5

send "ckpt ls tests/data/corpus/seed_keras2/tf_ckpts" Enter
sleep 2
capture ls_directory.txt

send "clear" Enter
sleep 0.3
send "ckpt show tests/data/corpus/seed_slots/tf_ckpts/ckpt-5 net/l1/ke" Tab
sleep 2
send Tab
sleep 1
send Tab
sleep 2
capture complete_key.txt
send C-c
sleep 0.3

send "clear" Enter
sleep 0.3
send "ckpt verify $BIG" Enter
for _ in $(seq 200); do
    sleep 0.05
    if tmux capture-pane -p -t $S | grep -q "tensors"; then
        if tmux capture-pane -p -t $S | grep -q "verifying"; then capture verify_progress.txt; break; fi
    fi
done
sleep 3
capture verify_done.txt
tmux kill-session -t $S
ls -l "$OUT"
