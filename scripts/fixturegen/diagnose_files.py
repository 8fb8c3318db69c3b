"""Files that are not what their names say, for the diagnosis of files that do not open: a Git
LFS pointer written by git-lfs itself (`git lfs pointer --file`) for a real fixture, with a
record of that fixture's sha256 and size computed here; a saved HTML error page and a JSON
error body as a download tool leaves them in place of a checkpoint."""

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

# The real file the pointer stands for (relative to tests/fixtures/).
POINTED = "safetensors/dtypes.safetensors"

# A 404 page as a model hub serves it, saved by `wget -O model.safetensors URL`.
NOT_FOUND_PAGE = """<!DOCTYPE html>
<html class="" lang="en">
<head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1.0, user-scalable=no" />
    <meta name="description" content="A model hub: models, datasets and demos." />
    <title>404 &ndash; Model Hub</title>
    <link rel="stylesheet" href="/front/build/style.css" />
</head>
<body class="flex flex-col min-h-screen bg-white">
    <main class="flex flex-1 flex-col">
        <div class="container relative flex flex-col items-center py-16 text-center">
            <h1 class="text-4xl font-bold">404</h1>
            <p class="text-lg text-gray-500">Sorry, we can&#39;t find the page you are looking for.</p>
        </div>
    </main>
</body>
</html>
"""

# A sign-in page served for a gated model fetched without a token, saved by `curl -L -o`.
LOGIN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>
  Sign in &middot; Model Hub
</title></head>
<body><form action="/login" method="POST"><input name="username"><input name="password" type="password">
<button type="submit">Sign in</button></form></body></html>
"""

# The error body of a hub's API for a repository that does not exist (or is private).
ERROR_BODY = '{"error":"Repository not found"}'


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    fixtures = out.parent
    pointed = fixtures / POINTED
    if shutil.which("git-lfs") is None:
        print("warning: git-lfs is missing: the LFS pointer fixture is left as it is", file=sys.stderr)
    else:
        pointer = subprocess.run(
            ["git", "lfs", "pointer", f"--file={pointed}"], check=True, capture_output=True
        ).stdout
        (out / "lfs_pointer.safetensors").write_bytes(pointer)
        data = pointed.read_bytes()
        record = {"pointer_of": POINTED, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        (out / "lfs_pointer.safetensors.record.json").write_text(json.dumps(record, indent=1) + "\n")
    (out / "not_found.safetensors").write_text(NOT_FOUND_PAGE)
    (out / "login.gguf").write_text(LOGIN_PAGE)
    (out / "repo_not_found.safetensors").write_text(ERROR_BODY)
