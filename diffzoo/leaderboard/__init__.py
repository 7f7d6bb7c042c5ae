"""The leaderboard: the record store and its frozen versions (:mod:`.store`,
:mod:`.versions`, :mod:`.verify`, :mod:`.diff`), and every table made of
records: one index choosing which records a table reads (:mod:`.index`), one
table model (:mod:`.table`), its layouts (:mod:`.layouts`: per case, the
paper's tables, the overview) and its renderers (:mod:`.render`), the paper's
published numbers (:mod:`.paper`) and robustness curves (:mod:`.robustness`)."""
