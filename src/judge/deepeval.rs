//! deepeval 4.3.1: ToolCorrectnessMetric's tool selection (`available_tools`).
