"""Label Studio from the project: a plain HTTP request against an SDK call in a subprocess.

Needs a running server (``make labelstudio-start``) with a project, ``LABEL_STUDIO_API_KEY`` and
``LABEL_STUDIO_URL``. Prints the wall time of reading one project's tasks both ways and the ratio:
the reason ``cultureqa.human.studio`` speaks HTTP instead of driving the SDK in ``.ls-venv``.

  python bench/labelstudio_client.py --project 1 [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

from cultureqa.human.studio import Studio

ROOT = Path(__file__).resolve().parents[1]
SDK_CALL = """
from label_studio_sdk import LabelStudio
client = LabelStudio(base_url={url!r}, api_key={token!r})
print(sum(1 for _ in client.tasks.list(project={project})))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--project", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    studio = Studio.from_env()
    http, sdk = [], []
    code = SDK_CALL.format(url=studio.url, token=studio.token, project=args.project)
    for _ in range(args.repeat):
        start = time.perf_counter()
        n_http = len(studio.tasks(args.project))
        http.append(time.perf_counter() - start)
        start = time.perf_counter()
        done = subprocess.run([str(ROOT / ".ls-venv" / "bin" / "python"), "-c", code],
                              capture_output=True, text=True, check=True)  # fmt: skip
        sdk.append(time.perf_counter() - start)
        assert int(done.stdout.strip()) == n_http, "the two routes read different task counts"
    load = os.getloadavg()[0]
    print(f"tasks read: {n_http}; load average {load:.1f}")
    print(f"httpx request   median {statistics.median(http):7.2f} s")
    print(f"SDK subprocess  median {statistics.median(sdk):7.2f} s")
    print(f"ratio SDK/httpx {statistics.median(sdk) / statistics.median(http):7.1f}")


if __name__ == "__main__":
    main()
