"""Models: the shared training loop (resumable), the segmenter and classifier
base classes plugins build on, checkpoints and their cache, where pretrained
weights come from, and the conformance check a plugin's detector must pass."""
