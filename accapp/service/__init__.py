"""What the app's probe and file scoring do, as plain data: functions that take an engine
(accapp.engine) and / or the results store (accapp.store) as arguments. The UI lays their
results out; the /probe and /score_file API endpoints return them.

    pairs       the shipped benchmarks' pairs: lookup by sentences, random pairs, filters
    probe       one pair: methods, scores, majority, verdict records, benchmark context
    score_file  a file of pairs: per-row checks, batches, one result row per input row
    messages    what a person reads when something fails
"""
