"""Launch configurations and the launch helper, without a GPU (a fake dispatcher)."""
import pytest
from numba.core import config

from fusejit.codegen import cuda_launch


class FakeDispatcher:
    def __init__(self, fail=False):
        self.seen, self.fail = [], fail

    def __getitem__(self, launch_config):
        # Numba warns when it makes the launch configuration, here
        flag = config.CUDA_LOW_OCCUPANCY_WARNINGS
        if self.fail:
            raise RuntimeError("bad launch configuration")

        def call(*args):
            self.seen.append((launch_config, args, flag))
        return call


def test_launches_without_numbas_low_occupancy_warning_and_restores_the_flag():
    # Numba warned "Grid size 1 will likely result in GPU under-utilization" on every launch
    # of a small kernel (an H200 run: 300 warnings, one in a user's warning filter)
    dispatcher, saved = FakeDispatcher(), config.CUDA_LOW_OCCUPANCY_WARNINGS
    cuda_launch.launch(dispatcher, 1, 32, 0, (3, "x"))
    assert dispatcher.seen == [((1, 32, 0), (3, "x"), 0)]
    assert saved == config.CUDA_LOW_OCCUPANCY_WARNINGS
    with pytest.raises(RuntimeError):
        cuda_launch.launch(FakeDispatcher(fail=True), 1, 32, 0, ())
    assert saved == config.CUDA_LOW_OCCUPANCY_WARNINGS


class FakeConfigured:
    def __init__(self, dispatcher, launch_config):
        self.dispatcher, self.launch_config = dispatcher, launch_config
        self.pre_launch_callbacks, self.stream = [], launch_config[2]

    def __call__(self, *args):
        for callback in self.pre_launch_callbacks:
            callback(object(), self)       # a "kernel" Direct cannot read: it declines
        self.dispatcher.seen.append((self.launch_config, args))


class CallbackDispatcher:
    def __init__(self):
        self.seen = []

    def __getitem__(self, launch_config):
        return FakeConfigured(self, launch_config)


def test_a_launch_site_direct_launches_cannot_serve_stays_on_the_dispatcher():
    dispatcher = CallbackDispatcher()
    launcher = cuda_launch.Launcher(dispatcher)
    for k in range(3):
        launcher(2, 64, 0, (k,))
    assert launcher.direct is None
    assert dispatcher.seen == [((2, 64, 0), (k,)) for k in range(3)]
