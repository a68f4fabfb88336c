//! uipath 2.14.44: the LLM-judge evaluators (`uipath-llm-judge-*`).
