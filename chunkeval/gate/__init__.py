"""The gate: a run's results judged against committed baselines.

`verdict.py` holds the paired test (Tolerance, Verdict, compare), `baselines.py` the baseline
files (read, checked, merged under a lock), `diffs.py` which queries lost most, and
`calibrate.py` how far the gate can be trusted on a strategy (false alarms, power, the noise
floor it records).
"""
