"""Models: the shared training loop (resumable) and what a training is given,
the detector base classes plugins build on (a torch module with checkpoints;
segmenters; image classifiers), checkpoints and their cache, where pretrained
weights come from, and the conformance check a plugin's detector must pass."""
