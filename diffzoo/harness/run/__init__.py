"""A run, in the order it happens: ``request`` holds what is asked (every option, declared
once), ``factories`` resolve names, ``plan`` decides the models, passes and cases,
``model_source`` trains or loads each model, ``thresholds`` fixes or calibrates, ``evaluate``
runs each pass (sharded, gathered), ``record`` turns pass results into records; ``runner``
ties them together, ``references`` adds a suite's reference detectors, ``prediction`` serves
single images.  The public entry point is :func:`diffzoo.evaluate`."""
