"""Issue 35, item 7: Prefect's temporary server (a flow run with no Prefect API) may take longer to start than
Prefect's default 20 s on a loaded machine; lowdens_pipelines gives it EPHEMERAL_STARTUP_SECONDS unless the
environment says otherwise."""

import os
import subprocess
import sys

import pytest

READ = (
    "import lowdens_pipelines.flows\n"
    "from prefect.settings import get_current_settings\n"
    "print(get_current_settings().server.ephemeral.startup_timeout_seconds)\n"
)


@pytest.mark.prefect
@pytest.mark.slow
@pytest.mark.parametrize("given,expected", [(None, "120"), ("45", "45")])
def test_the_flows_give_prefects_temporary_server_time_to_start(given, expected):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"}
    if given is not None:
        env["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = given
    out = subprocess.run([sys.executable, "-c", READ], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == expected
