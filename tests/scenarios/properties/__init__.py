"""Property tests of the simulator over generated workloads.

strategies.py, workloads.py and pressure.py (work that must evict, over disruption
budgets) generate the input, configs.py the configurations; runner.py runs it; world.py,
ledger.py, node_rules.py, invariants.py, evictions.py, budgets.py and checker.py judge
every event; steering.py holds the switches around open bugs; conftest.py the Hypothesis
profiles.
"""
