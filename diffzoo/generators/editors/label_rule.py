"""The defaults of the pixel-difference label rule (labels.py), as plain data: the CLI shows
them in ``diffzoo data label-pairs --help`` without importing numpy and OpenCV."""

DEFAULT_TAU = 0.05
"""A pixel is changed if the mean over RGB of |orig/255 - gen/255| exceeds it (PIXAR's default)."""
DEFAULT_MIN_AREA = 0.01
DEFAULT_MAX_AREA = 0.70
"""Area bounds, as fractions of the compared pixels.  PIXAR drops edits below
2,480 px or above 184,500 px (about 0.95% and 70% of 512 x 512); a bound above
1 is a pixel count, so those values can be passed as they are."""
DEFAULT_CLEANUP = 3
"""Side in pixels of the square that opens and closes the changed mask (0: off)."""
