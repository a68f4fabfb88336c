//! deepeval 4.3.1's OpenAI model table (`models/llms/constants.py`,
//! `OPENAI_MODELS_DATA`): what shapes the request (structured outputs, JSON
//! mode, temperature), what `measure()` accepts (multimodal input), and the
//! prices behind `evaluation_cost`.
//!
//! Generated from the reference's table, in its order (the order matters:
//! the multimodal error lists the multimodal models in it).
//!
//! A model that is not in the table gets deepeval's `DeepEvalModelData()`
//! defaults ([`ModelData::UNKNOWN`]): no structured outputs and no JSON mode
//! (so a plain `chat.completions.create` whose answer is parsed leniently),
//! temperature sent, not multimodal, no prices (so `evaluation_cost` is
//! None). deepeval does not refuse unknown names, and neither do we.

/// One model's capabilities and prices (`DeepEvalModelData`); `None` is
/// Python's `None` (falsy, and not `True`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelData {
    pub name: &'static str,
    pub supports_structured_outputs: Option<bool>,
    pub supports_json: Option<bool>,
    pub supports_temperature: Option<bool>,
    pub supports_multimodal: Option<bool>,
    pub requires_audio: Option<bool>,
    /// USD per input token.
    pub input_price: Option<f64>,
    /// USD per audio input token.
    pub audio_input_price: Option<f64>,
    /// USD per output token.
    pub output_price: Option<f64>,
}

impl ModelData {
    /// `DeepEvalModelData()`: what deepeval uses for a name not in its table.
    pub const UNKNOWN: ModelData = ModelData {
        name: "",
        supports_structured_outputs: None,
        supports_json: None,
        supports_temperature: Some(true),
        supports_multimodal: None,
        requires_audio: None,
        input_price: None,
        audio_input_price: None,
        output_price: None,
    };
}

/// `OPENAI_MODELS_DATA.get(name)`: the entry, or the defaults.
pub fn lookup(name: &str) -> ModelData {
    MODELS
        .iter()
        .find(|m| m.name == name)
        .copied()
        .unwrap_or(ModelData::UNKNOWN)
}

/// The multimodal models, in table order, as deepeval lists them in its
/// "does not support multimodal evaluations" error.
pub fn multimodal_names() -> impl Iterator<Item = &'static str> {
    MODELS
        .iter()
        .filter(|m| m.supports_multimodal == Some(true))
        .map(|m| m.name)
}

#[allow(clippy::too_many_arguments)]
const fn m(
    name: &'static str,
    supports_structured_outputs: Option<bool>,
    supports_json: Option<bool>,
    supports_temperature: Option<bool>,
    supports_multimodal: Option<bool>,
    requires_audio: Option<bool>,
    input_price: Option<f64>,
    audio_input_price: Option<f64>,
    output_price: Option<f64>,
) -> ModelData {
    ModelData {
        name,
        supports_structured_outputs,
        supports_json,
        supports_temperature,
        supports_multimodal,
        requires_audio,
        input_price,
        audio_input_price,
        output_price,
    }
}

// Columns: name, structured outputs, JSON mode, temperature, multimodal,
// requires audio, input, audio input and output price per token.
#[rustfmt::skip]
const MODELS: &[ModelData] = &[
    m("gpt-3.5-turbo", Some(false), Some(true), Some(true), Some(false), None, Some(5e-07), None, Some(1.5e-06)),
    m("gpt-3.5-turbo-0125", Some(false), Some(true), Some(true), Some(false), None, Some(5e-07), None, Some(1.5e-06)),
    m("gpt-3.5-turbo-1106", Some(false), Some(true), Some(true), Some(false), None, Some(1e-06), None, Some(2e-06)),
    m("gpt-4-0125-preview", Some(false), Some(true), Some(true), Some(true), None, Some(1e-05), None, Some(3e-05)),
    m("gpt-4-1106-preview", Some(false), Some(true), Some(true), Some(true), None, Some(1e-05), None, Some(3e-05)),
    m("gpt-4-turbo", Some(false), Some(true), Some(true), Some(true), None, Some(1e-05), None, Some(3e-05)),
    m("gpt-4-turbo-2024-04-09", Some(false), Some(true), Some(true), Some(true), None, Some(1e-05), None, Some(3e-05)),
    m("gpt-4-turbo-preview", Some(false), Some(true), Some(true), Some(true), None, Some(1e-05), None, Some(3e-05)),
    m("gpt-4o", Some(true), Some(false), Some(true), Some(true), None, Some(2.5e-06), None, Some(1e-05)),
    m("gpt-4", Some(true), Some(true), Some(true), Some(false), None, Some(3e-05), None, Some(6e-05)),
    m("gpt-4o-2024-05-13", Some(true), Some(false), Some(true), Some(true), None, Some(2.5e-06), None, Some(1e-05)),
    m("gpt-4o-2024-08-06", Some(true), Some(false), Some(true), Some(true), None, Some(2.5e-06), None, Some(1e-05)),
    m("gpt-4o-2024-11-20", Some(true), Some(false), Some(true), Some(true), None, Some(2.5e-06), None, Some(1e-05)),
    m("gpt-4o-mini", Some(true), Some(false), Some(true), Some(true), None, Some(1.5e-07), None, Some(6e-07)),
    m("gpt-4o-mini-2024-07-18", Some(true), Some(false), Some(true), Some(true), None, Some(1.5e-07), None, Some(6e-07)),
    m("gpt-4-32k", Some(false), Some(true), Some(true), Some(true), None, Some(6e-05), None, Some(0.00012)),
    m("gpt-4-32k-0613", Some(false), Some(false), Some(true), Some(true), None, Some(6e-05), None, Some(0.00012)),
    m("gpt-4.1", Some(true), Some(false), Some(true), Some(true), None, Some(2e-06), None, Some(8e-06)),
    m("gpt-4.1-mini", Some(true), Some(false), Some(true), Some(true), None, Some(4.0000000000000003e-07), None, Some(1.6000000000000001e-06)),
    m("gpt-4.1-nano", Some(true), Some(false), Some(true), Some(false), None, Some(1.0000000000000001e-07), None, Some(4.0000000000000003e-07)),
    m("gpt-4.5-preview", Some(false), Some(false), Some(true), Some(false), None, Some(7.5e-05), None, Some(0.00015)),
    m("gpt-4.5-preview-2025-02-27", Some(true), Some(false), Some(true), Some(false), None, Some(7.5e-05), None, Some(0.00015)),
    m("o1", Some(true), Some(false), Some(false), Some(false), None, Some(1.5e-05), None, Some(6e-05)),
    m("o1-preview", Some(true), Some(false), Some(true), Some(false), None, Some(1.5e-05), None, Some(6e-05)),
    m("o1-2024-12-17", Some(true), Some(false), Some(false), Some(false), None, Some(1.5e-05), None, Some(6e-05)),
    m("o1-preview-2024-09-12", Some(false), Some(false), Some(true), Some(false), None, Some(1.5e-05), None, Some(6e-05)),
    m("o1-mini", Some(false), Some(false), Some(false), Some(false), None, None, None, None),
    m("o1-mini-2024-09-12", Some(false), Some(false), Some(false), Some(false), None, None, None, None),
    m("o3-mini", Some(true), Some(false), Some(false), Some(false), None, Some(1.1e-06), None, Some(4.4e-06)),
    m("o3-mini-2025-01-31", Some(true), Some(false), Some(false), Some(false), None, Some(1.1e-06), None, Some(4.4e-06)),
    m("o4-mini", Some(true), Some(false), Some(false), Some(false), None, Some(1.1e-06), None, Some(4.4e-06)),
    m("o4-mini-2025-04-16", Some(true), Some(false), Some(false), Some(false), None, Some(1.1e-06), None, Some(4.4e-06)),
    m("gpt-5", Some(true), Some(false), Some(false), Some(true), None, Some(1.25e-06), None, Some(1e-05)),
    m("gpt-5-2025-08-07", Some(true), Some(false), Some(false), Some(false), None, Some(1.25e-06), None, Some(1e-05)),
    m("gpt-5-mini", Some(true), Some(false), Some(false), Some(false), None, Some(2.5e-07), None, Some(2e-06)),
    m("gpt-5-mini-2025-08-07", Some(true), Some(false), Some(false), Some(false), None, Some(2.5e-07), None, Some(2e-06)),
    m("gpt-5-nano", Some(true), Some(false), Some(false), Some(false), None, Some(5.0000000000000004e-08), None, Some(4.0000000000000003e-07)),
    m("gpt-5-nano-2025-08-07", Some(true), Some(false), Some(false), Some(false), None, Some(5.0000000000000004e-08), None, Some(4.0000000000000003e-07)),
    m("gpt-5-chat-latest", Some(false), Some(false), Some(true), Some(false), None, Some(1.25e-06), None, Some(1e-05)),
    m("gpt-5.1", Some(true), Some(false), Some(false), Some(true), None, Some(1.25e-06), None, Some(1e-05)),
    m("gpt-5.2", Some(true), Some(false), Some(false), Some(true), None, Some(1.75e-06), None, Some(1.4e-05)),
    m("gpt-5.4", Some(true), Some(true), Some(false), Some(true), None, Some(2.5e-06), None, Some(1.5e-05)),
    m("gpt-5.4-2026-03-05", Some(true), Some(true), Some(false), Some(true), None, Some(2.5e-06), None, Some(1.5e-05)),
    m("gpt-5.4-mini", Some(true), Some(false), Some(false), Some(true), None, Some(7.5e-07), None, Some(4.5e-06)),
    m("gpt-5.5", Some(true), Some(true), Some(false), Some(true), None, Some(5e-06), None, Some(3e-05)),
    m("gpt-5.5-2026-04-23", Some(true), Some(true), Some(false), Some(true), None, Some(5e-06), None, Some(3e-05)),
    m("gpt-5.6-sol", Some(true), Some(true), Some(false), Some(true), None, Some(4e-06), None, Some(2e-05)),
    m("gpt-5.6-terra", Some(true), Some(true), Some(false), Some(true), None, Some(2e-06), None, Some(1.2e-05)),
    m("gpt-5.6-luna", Some(true), Some(true), Some(false), Some(true), None, Some(2.0000000000000002e-07), None, Some(1.2e-06)),
    m("gpt-6-astra", Some(true), Some(true), Some(false), Some(true), None, Some(1e-05), None, Some(5e-05)),
    m("gpt-6-sol", Some(true), Some(true), Some(false), Some(true), None, Some(2e-06), None, Some(1e-05)),
    m("gpt-6-luna", Some(true), Some(true), Some(false), Some(true), None, Some(1.0000000000000001e-07), None, Some(5e-07)),
    m("gpt-audio", None, None, Some(true), Some(false), Some(true), Some(2.5e-06), Some(3.2e-05), Some(1e-05)),
    m("gpt-audio-2025-08-28", None, None, Some(true), Some(false), Some(true), Some(2.5e-06), Some(3.2e-05), Some(1e-05)),
    m("gpt-audio-1.5", None, None, Some(true), Some(false), Some(true), Some(2.5e-06), Some(3.2e-05), Some(1e-05)),
    m("gpt-audio-mini", None, None, Some(true), Some(false), Some(true), Some(6e-07), Some(1e-05), Some(2.4e-06)),
    m("gpt-audio-mini-2025-10-06", None, None, Some(true), Some(false), Some(true), Some(6e-07), Some(1e-05), Some(2.4e-06)),
    m("gpt-audio-mini-2025-12-15", None, None, Some(true), Some(false), Some(true), Some(6e-07), Some(1e-05), Some(2.4e-06)),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_model_and_unknown_names() {
        let d = lookup("gpt-5.4");
        assert_eq!(d.supports_structured_outputs, Some(true));
        assert_eq!(d.supports_temperature, Some(false));
        assert_eq!(d.input_price, Some(2.50 / 1e6));
        assert_eq!(lookup("no-such-model"), ModelData::UNKNOWN);
        assert_eq!(multimodal_names().next(), Some("gpt-4-0125-preview"));
    }
}
