"""A stand-in browser for OAuth tests: ``$BROWSER`` runs it with the authorization URL.

It follows the authorization server's redirect to the client's loopback callback, as a
person approving the login would, and appends the URL it was given to ``$FOLLOW_LOG``
(if set). ``$FOLLOW_MODE``: ``tamper`` delivers the code with another ``state`` (a forged
callback); ``deny`` answers ``error=access_denied`` as a person refusing would.
"""

import contextlib
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

url = sys.argv[1]
mode = os.environ.get("FOLLOW_MODE", "")
if os.environ.get("FOLLOW_LOG"):
    with open(os.environ["FOLLOW_LOG"], "a", encoding="utf-8") as f:
        f.write(url + "\n")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None


if not mode:
    with urllib.request.urlopen(url, timeout=30) as response:  # follows the 302 to the callback
        response.read()
    sys.exit(0)

opener = urllib.request.build_opener(NoRedirect)
try:
    opener.open(url, timeout=30)
    sys.exit("expected a redirect")
except urllib.error.HTTPError as exc:
    location = exc.headers["Location"]
parts = urllib.parse.urlsplit(location)
query = dict(urllib.parse.parse_qsl(parts.query))
if mode == "tamper":
    query["state"] = "forged-" + query.get("state", "")
else:
    query = {"error": "access_denied", "error_description": "the user said no"}
forged = parts._replace(query=urllib.parse.urlencode(query)).geturl()
with contextlib.suppress(urllib.error.HTTPError):  # our callback answers 400 to a refusal
    urllib.request.urlopen(forged, timeout=30).read()
