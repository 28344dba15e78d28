#!/usr/bin/env python3
"""Creates a container in Azurite, signed with SharedKey by the emulator's well-known
development account (standard library only).

    python scripts/azurite_container.py http://127.0.0.1:PORT CONTAINER
"""
import base64, hashlib, hmac, sys, urllib.request
from email.utils import formatdate
ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
def create(endpoint, container):
    date = formatdate(usegmt=True)
    version = "2021-08-06"
    sts = "\n".join(["PUT", "", "", "", "", "", "", "", "", "", "", "",
                     f"x-ms-date:{date}\nx-ms-version:{version}",
                     f"/{ACCOUNT}/{ACCOUNT}/{container}\nrestype:container"])
    sig = base64.b64encode(hmac.new(base64.b64decode(KEY), sts.encode(), hashlib.sha256).digest()).decode()
    req = urllib.request.Request(f"{endpoint}/{ACCOUNT}/{container}?restype=container", method="PUT",
                                 headers={"x-ms-date": date, "x-ms-version": version,
                                          "Authorization": f"SharedKey {ACCOUNT}:{sig}", "Content-Length": "0"})
    urllib.request.urlopen(req)
if __name__ == "__main__":
    create(sys.argv[1], sys.argv[2])
