"""GLIDE text-guided inpainting (Nichol et al. 2021): a compact PyTorch port that loads the
official ``base_inpaint.pt`` / ``upsample_inpaint.pt`` checkpoints; see ``editor.py``."""
