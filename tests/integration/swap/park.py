# park.py - shared by the parking tests (a_quota_reclaim_*.sh beside it):
# the daemon's view of a slice, a team's usage and the metrics, through
# the CLI and the API socket (hold.py has the rest).
import json, subprocess

from hold import G, SOCK, fail


def slice_json(name):
    return json.loads(subprocess.run([G, "show", name, "--json"],
                                     capture_output=True, text=True,
                                     check=True).stdout)


def api_get(path):
    return subprocess.run(["curl", "-sf", "--unix-socket", SOCK,
                           "http://localhost" + path], capture_output=True,
                          text=True, check=True).stdout


def team_mem(team):
    return json.loads(api_get("/v1/teams/" + team))["usage"]["memory_bytes"]


def expect_metrics(*lines):
    m = api_get("/metrics")
    for want in lines:
        if want + "\n" not in m:
            got = [l for l in m.splitlines()
                   if l.startswith(want.split()[0] + " ")]
            fail(f"metrics: want '{want}', got {got}")


def expect_listed_parked(name):
    """`list`, `top --once` and `show` say `name` is parked."""
    lst = subprocess.run([G, "list"], capture_output=True, text=True,
                         check=True).stdout
    if not any(l.split()[:1] == [name] and "parked" in l.split()
               for l in lst.splitlines()):
        fail(f"list does not show {name} parked:\n{lst}")
    top = subprocess.run([G, "top", "--once"], capture_output=True,
                         text=True, check=True).stdout
    if not any(l.split()[:1] == [name] and l.split()[-1] == "parked"
               for l in top.splitlines()):
        fail(f"top does not show {name} parked:\n{top}")
    txt = subprocess.run([G, "show", name], capture_output=True, text=True,
                         check=True).stdout
    if "state:       parked: team" not in txt:
        fail(f"show does not say {name} is parked and why:\n{txt}")
