"""How records become tables (:mod:`diffzoo.leaderboard.table`): one table per
case (:mod:`.cases`), the DiffSeg30k paper's Tables 2-8 with format parity and
cross-dataset (:mod:`.paper`: the run summary, and with the paper's numbers the
paper report), and the overview (:mod:`.overview`)."""
