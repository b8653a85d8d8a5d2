# A Keras 3 model under tf.train.Checkpoint (TensorFlow >= 2.16, where tf.keras is Keras 3): Keras 3 tracks a
# Dense layer's kernel as `_kernel`, so its key is `net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE` where Keras 2
# wrote `net/l1/kernel/...` (the spelling tests/test_first_mistakes.py's did-you-mean is about).
# Usage: python keras3_tf_checkpoint.py tests/data/keras3_tf_checkpoint
import os
import sys

os.environ.pop("TF_USE_LEGACY_KERAS", None)
import tensorflow as tf  # noqa: E402

assert tf.keras.__name__.startswith("keras") and int(tf.keras.__version__.split(".")[0]) >= 3, tf.keras.__version__
out = sys.argv[1]
tf.random.set_seed(0)


class Net(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.l1 = tf.keras.layers.Dense(5)
        self.l2 = tf.keras.layers.Dense(3)

    def call(self, x):
        return self.l2(self.l1(x))


net = Net()
opt = tf.keras.optimizers.Adam(0.1)
for _ in range(2):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.abs(net(tf.ones([2, 1])) - 1.0))
    opt.apply_gradients(zip(tape.gradient(loss, net.trainable_variables), net.trainable_variables))
ckpt = tf.train.Checkpoint(step=tf.Variable(2), optimizer=opt, net=net)
manager = tf.train.CheckpointManager(ckpt, os.path.join(out, "tf_ckpts"), max_to_keep=3)
path = manager.save()
print(path)
for key, shape in tf.train.list_variables(path):
    print(key, shape)
