"""Property tests of the simulator over generated workloads.

strategies.py and workloads.py generate the input; runner.py runs it; world.py, ledger.py,
node_rules.py, invariants.py and checker.py judge every event; steering.py holds the
switches around open bugs; conftest.py the Hypothesis profiles.
"""
