"""What reads predictions: the planner, sizing, scaling, validation, calibration, logs."""
