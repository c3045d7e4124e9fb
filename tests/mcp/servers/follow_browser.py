"""A stand-in browser for OAuth tests: ``$BROWSER`` runs it with the authorization URL.

It follows the authorization server's redirect to the client's loopback callback, as a
person approving the login would, and appends the URL it was given to ``$FOLLOW_LOG``
(if set).
"""

import os
import sys
import urllib.request

url = sys.argv[1]
if os.environ.get("FOLLOW_LOG"):
    with open(os.environ["FOLLOW_LOG"], "a", encoding="utf-8") as f:
        f.write(url + "\n")
with urllib.request.urlopen(url, timeout=30) as response:  # follows the 302 to the callback
    response.read()
