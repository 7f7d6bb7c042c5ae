"""The leaderboard: the record store and its frozen versions, one table
model (:mod:`.tables`) rendered to every format (:mod:`.render`), diffs of
two versions, the run summary (:mod:`.summary`), the paper report
(:mod:`.paper`), robustness curves and the one rule for the newest record."""
