"""Files in and out: resource paths, scene files, trajectories, videos and plots."""
