"""One torch thread for a test module's small forward passes: on a shared 2-core box one thread beats
two contended ones (tiny models: about 40x). A module uses it with `from tests.threads import one_thread`."""

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
