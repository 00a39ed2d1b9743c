"""Evaluation: how well a policy would have selected, out of sample (`backtest`, `evaluate`,
the replay, day one, `train`, `report`)."""
