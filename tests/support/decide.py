"""A campaign whose decisions are known in advance, for `repeats = "decide"` tests (local,
batch and Slurm): each launch prints the next value of its variant's list (a counter file per
variant and group), so a vs b is 3x (decided at the first look) and a vs c is A/A with 2%
spread (neither significant nor within +-0.5%). The campaign is interleaved, so its rounds
are compared as pairs (stats.launch.pair_rounds): b's ratio to a moves by 1-2% from round
to round (exactly 3x in every round would leave the paired test no spread to test). Eight
values per list: campaigns of up to 8 rounds."""

from __future__ import annotations

from pathlib import Path

# the counter is read and bumped under a lock: a batch campaign runs up to
# max_jobs_in_flight jobs at once, two of one variant and group (rounds 3 and 4) can run
# together, and one can read the counter the other has just truncated: `shift ""` is
# "Illegal number" and the launch fails (2 such runs at once: 1 failure in 300 pairs; the
# likely cause of a fresh-clone failure of stop 40, 15 of 16 launches done)
DECIDE_SCRIPT = """
f="$DIR/count_${V}_${G}"
exec 9>"$f.lock"; flock 9
n=$(cat "$f" 2>/dev/null || echo 0); echo $((n + 1)) > "$f"
exec 9>&-
case "$V" in
  a) set -- 100 102 98 101 99 100 101 99 ;;
  b) set -- 300 312 291 306 294 303 297 309 ;;
  c) set -- 101 99 100 98 102 100 99 101 ;;
esac
shift "$n"; echo "value $1"
"""

_GROUPS = """
[defaults]
stack = "none"
launcher = "template"
launcher_args = ["sh", "-c", 'exec "$0" "$@"', "{program}"]
np = 1
[variants.a]
env = { V = "a", DIR = "@DIR@" }
[variants.b]
env = { V = "b", DIR = "@DIR@" }
[variants.c]
env = { V = "c", DIR = "@DIR@" }
[benchmarks.differ]
variants = ["a", "b"]
env = { G = "differ" }
command = "sh @DIR@/value.sh"
fom = { name = "t", regex = 'value ([0-9]+)', unit = "s", better = "lower" }
[benchmarks.same]
variants = ["a", "c"]
env = { G = "same" }
command = "sh @DIR@/value.sh"
fom = { name = "t", regex = 'value ([0-9]+)', unit = "s", better = "lower" }
"""


def write_decide_campaign(directory: Path, campaign: str, tail: str = "") -> Path:
    """value.sh and decide.toml in directory: `campaign` is the [campaign] table's body,
    `tail` any tables after the benchmarks (a [scheduler]); returns the campaign file."""
    (directory / "value.sh").write_text(DECIDE_SCRIPT)
    camp = directory / "decide.toml"
    text = "[campaign]\n" + campaign.strip() + "\n" + _GROUPS.lstrip("\n") + tail.lstrip("\n")
    camp.write_text(text.replace("@DIR@", str(directory)))
    return camp
