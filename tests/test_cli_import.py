"""The CLI and the jobs package stay light: importing them loads no mlx, mlx_audio or pydub."""

import subprocess
import sys


def test_importing_cli_and_jobs_loads_no_mlx():
    code = (
        "import sys, narrate.cli.main, narrate.jobs.api, narrate.jobs.task, narrate.jobs.documents;"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'mlx', 'mlx_audio', 'pydub'});"
        "print(','.join(heavy))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""
