"""diffzoo's benchmarks: ``python -m benchmarks`` runs them all (see README.md here)."""
