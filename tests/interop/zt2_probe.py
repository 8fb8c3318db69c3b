"""Run by test_zt2.py with the zTensor 2 environment's Python (pip ztensor 2.1.2, which cannot
live beside ztensor 0.1.4): it reads or converts a file with ztensor and prints JSON.

    zt2_probe.py read FILE       every object as ztensor.open reads it, every part's bytes
                                 hashed, and ztensor.verify(deep=True)
    zt2_probe.py convert SRC DST ztensor.convert (a zTensor 2 file in canonical form)
"""

import hashlib
import json
import sys

import ztensor


def read(path: str) -> dict:
    src = ztensor.open(path)
    objects = {}
    for name in src.keys():
        t = src[name]
        parts = {}
        for p in t.parts:
            data = t[p].tobytes()
            parts[p] = {
                "dtype": t[p].dtype,
                "logical": t[p].logical,
                "nbytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
                "head": data[:64].hex(),
            }
        objects[name] = {"shape": list(t.shape), "layout": t.layout, "parts": parts}
    checked, undigested = ztensor.verify(path, deep=True)
    return {"attributes": src.attributes, "objects": objects, "checked": checked, "undigested": undigested}


def main() -> None:
    command, *args = sys.argv[1:]
    if command == "read":
        print(json.dumps(read(args[0])))
    elif command == "convert":
        ztensor.convert(args[0], args[1])
        print(json.dumps({"ok": True}))
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()
