# The dygraph net of dygraph_groupnorm_save.py and dygraph_groupnorm_load.py: conv, GroupNorm with
# default attributes (fluid 1.8.5 gave it no scale or bias), Linear.
import paddle.fluid as fluid
from paddle.fluid.dygraph import Conv2D, GroupNorm, Linear


class Net(fluid.dygraph.Layer):
    def __init__(self):
        super().__init__()
        self.conv = Conv2D(2, 4, 3, padding=1)
        self.norm = GroupNorm(4, 2)
        self.fc = Linear(4 * 5 * 5, 3)

    def forward(self, x):
        y = self.norm(self.conv(x))
        return self.fc(fluid.layers.reshape(y, [-1, 4 * 5 * 5]))
