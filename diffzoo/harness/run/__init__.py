"""A run, in the order it happens: request holds what is asked, factories resolve names, planning decides
which models and passes the suites need, model_source trains or loads each
model, thresholds fixes or calibrates, evaluate streams a split through a
distortion into the detector, case_records turns metric states into records;
runner ties them together, references adds a suite's reference detectors,
prediction serves single images.  The public entry point is :func:`diffzoo.evaluate`."""
