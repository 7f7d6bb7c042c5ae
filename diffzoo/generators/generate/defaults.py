"""The hub ids ``diffzoo generate`` uses unless told otherwise, as plain data: the CLI shows
them in ``--help`` without importing the model code (numpy, transformers) behind them."""

DEFAULT_DETECTOR = "IDEA-Research/grounding-dino-base"  # or IDEA-Research/grounding-dino-tiny
DEFAULT_SAM = "facebook/sam-vit-huge"  # or facebook/sam-vit-base
DEFAULT_VLM = "Qwen/Qwen2.5-VL-7B-Instruct"
