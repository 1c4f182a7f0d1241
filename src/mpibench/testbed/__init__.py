"""A cluster in a box: nodes as Linux namespaces, fabrics as tc-shaped bridges, Slurm across
them. See docs/testbed.md; `python -m mpibench.testbed --help`.

    from mpibench.testbed import Testbed
    bed = Testbed.load(DIR)          # a running testbed started by `start DIR`
    bed.nodes[0].addresses["fast"]   # 198.18.1.1
    bed.run("tn1", ["hostname"])     # a CommandResult
"""

from mpibench.testbed.bed import Fabric, Node, Testbed
from mpibench.testbed.spec import FabricSpec, parse_fabrics
from mpibench.testbed.system import TestbedError, TestbedUnavailable, preflight

__all__ = ["Fabric", "FabricSpec", "Node", "Testbed", "TestbedError", "TestbedUnavailable",
           "parse_fabrics", "preflight"]
