//! Which provider API, where it is, which model, and where its key comes from.

/// The two wire formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Api {
    /// `POST {base}/chat/completions`, `GET {base}/models`.
    OpenAiChat,
    /// `POST {base}/v1/messages`, `GET {base}/v1/models`.
    AnthropicMessages,
}

/// A model to talk to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSpec {
    pub api: Api,
    /// The provider's name as written (`openai`, `anthropic`, `ollama`, …).
    pub provider: String,
    pub model: String,
    /// Without a trailing slash.
    pub base_url: String,
}

/// Known providers: name, API, base URL, and the variable their own SDK reads
/// the key from (`None`: a local server that needs no key).
const PROVIDERS: &[(&str, Api, &str, Option<&str>)] = &[
    (
        "openai",
        Api::OpenAiChat,
        "https://api.openai.com/v1",
        Some("OPENAI_API_KEY"),
    ),
    (
        "anthropic",
        Api::AnthropicMessages,
        "https://api.anthropic.com",
        Some("ANTHROPIC_API_KEY"),
    ),
    (
        "openrouter",
        Api::OpenAiChat,
        "https://openrouter.ai/api/v1",
        Some("OPENROUTER_API_KEY"),
    ),
    (
        "groq",
        Api::OpenAiChat,
        "https://api.groq.com/openai/v1",
        Some("GROQ_API_KEY"),
    ),
    (
        "together",
        Api::OpenAiChat,
        "https://api.together.xyz/v1",
        Some("TOGETHER_API_KEY"),
    ),
    (
        "mistral",
        Api::OpenAiChat,
        "https://api.mistral.ai/v1",
        Some("MISTRAL_API_KEY"),
    ),
    ("ollama", Api::OpenAiChat, "http://127.0.0.1:11434/v1", None),
    ("llamacpp", Api::OpenAiChat, "http://127.0.0.1:8080/v1", None),
    ("vllm", Api::OpenAiChat, "http://127.0.0.1:8000/v1", None),
    ("lmstudio", Api::OpenAiChat, "http://127.0.0.1:1234/v1", None),
];

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("{0:?} names no model: write PROVIDER:MODEL, e.g. openai:gpt-4.1-mini or anthropic:claude-sonnet-4-5")]
    NoModel(String),
    #[error(
        "unknown provider {0:?}: one of openai, anthropic, openrouter, groq, together, mistral, ollama, llamacpp, vllm, lmstudio, or any name with --base-url (an OpenAI-compatible server)"
    )]
    UnknownProvider(String),
    #[error("--base-url {0:?} is not an http:// or https:// URL")]
    BadBaseUrl(String),
}

impl ModelSpec {
    /// `PROVIDER:MODEL` (the model may hold colons itself: `ollama:llama3.1:8b`).
    /// A provider not in the list needs `base_url` (an OpenAI-compatible
    /// server); `base_url` also overrides a known provider's.
    pub fn parse(text: &str, base_url: Option<&str>) -> Result<ModelSpec, SpecError> {
        let (provider, model) = text
            .split_once(':')
            .filter(|(p, m)| !p.is_empty() && !m.is_empty())
            .ok_or_else(|| SpecError::NoModel(text.to_owned()))?;
        let provider = provider.to_ascii_lowercase();
        let known = PROVIDERS.iter().find(|(name, ..)| *name == provider);
        let base = match (base_url, known) {
            (Some(url), _) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(SpecError::BadBaseUrl(url.to_owned()));
                }
                url.trim_end_matches('/').to_owned()
            }
            (None, Some((_, _, url, _))) => (*url).to_owned(),
            (None, None) => return Err(SpecError::UnknownProvider(provider)),
        };
        Ok(ModelSpec {
            api: known.map_or(Api::OpenAiChat, |(_, api, ..)| *api),
            provider,
            model: model.to_owned(),
            base_url: base,
        })
    }

    /// The variable the provider's own SDK reads its key from, if it needs one.
    pub fn key_variable(&self) -> Option<&'static str> {
        PROVIDERS
            .iter()
            .find(|(name, ..)| *name == self.provider)
            .and_then(|(.., var)| *var)
    }

    /// Where a turn is asked for.
    pub fn completion_url(&self) -> String {
        match self.api {
            Api::OpenAiChat => format!("{}/chat/completions", self.base_url),
            Api::AnthropicMessages => format!("{}/v1/messages", self.base_url),
        }
    }

    /// Where the provider lists its models.
    pub fn models_url(&self) -> String {
        match self.api {
            Api::OpenAiChat => format!("{}/models", self.base_url),
            Api::AnthropicMessages => format!("{}/v1/models", self.base_url),
        }
    }

    /// The headers that carry `key` (to be masked wherever they are shown).
    pub fn auth_headers(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        match (self.api, key) {
            (Api::OpenAiChat, Some(k)) => vec![("authorization", format!("Bearer {k}"))],
            (Api::OpenAiChat, None) => vec![],
            (Api::AnthropicMessages, k) => {
                let mut h = vec![("anthropic-version", "2023-06-01".to_owned())];
                if let Some(k) = k {
                    h.push(("x-api-key", k.to_owned()));
                }
                h
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_provider_colon_model() {
        let m = ModelSpec::parse("openai:gpt-4.1-mini", None).unwrap();
        assert_eq!((m.api, m.model.as_str()), (Api::OpenAiChat, "gpt-4.1-mini"));
        assert_eq!(m.completion_url(), "https://api.openai.com/v1/chat/completions");
        assert_eq!(m.key_variable(), Some("OPENAI_API_KEY"));
        let a = ModelSpec::parse("Anthropic:claude-sonnet-4-5", None).unwrap();
        assert_eq!(a.api, Api::AnthropicMessages);
        assert_eq!(a.completion_url(), "https://api.anthropic.com/v1/messages");
        assert_eq!(a.models_url(), "https://api.anthropic.com/v1/models");
        // A model name with colons of its own, a local server without a key.
        let o = ModelSpec::parse("ollama:llama3.1:8b", None).unwrap();
        assert_eq!((o.model.as_str(), o.key_variable()), ("llama3.1:8b", None));
        // Any OpenAI-compatible server by its URL.
        let local = ModelSpec::parse("mine:qwen", Some("http://127.0.0.1:9000/v1/")).unwrap();
        assert_eq!(local.completion_url(), "http://127.0.0.1:9000/v1/chat/completions");
        assert_eq!(
            ModelSpec::parse("mine:qwen", None),
            Err(SpecError::UnknownProvider("mine".into()))
        );
        assert!(matches!(ModelSpec::parse("gpt-4", None), Err(SpecError::NoModel(_))));
        assert!(matches!(ModelSpec::parse("openai:", None), Err(SpecError::NoModel(_))));
        assert!(matches!(
            ModelSpec::parse("openai:x", Some("ftp://h")),
            Err(SpecError::BadBaseUrl(_))
        ));
    }

    #[test]
    fn each_api_carries_its_key_its_own_way() {
        let o = ModelSpec::parse("openai:m", None).unwrap();
        assert_eq!(
            o.auth_headers(Some("sk-1")),
            [("authorization", "Bearer sk-1".to_owned())]
        );
        assert!(o.auth_headers(None).is_empty());
        let a = ModelSpec::parse("anthropic:m", None).unwrap();
        let h = a.auth_headers(Some("sk-ant"));
        assert!(h.contains(&("x-api-key", "sk-ant".to_owned())));
        assert!(h.iter().any(|(n, _)| *n == "anthropic-version"));
    }
}
