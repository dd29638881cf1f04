//! A run without credentials fails before any request, saying where tern looked.

use tern_ai::providers::{catalog, run, ProviderSink};
use tern_ai::stream_fn::{Context, StreamOptions};
use tern_ai::{AssistantMessageEvent, Model};

#[derive(Default)]
struct Last(Option<String>, usize);

impl ProviderSink for Last {
    fn emit(&mut self, event: AssistantMessageEvent) {
        self.1 += 1;
        if let AssistantMessageEvent::Error { error, .. } = event {
            self.0 = error.error_message.clone();
        }
    }
}

fn failure(api: &str, provider: &str) -> (Option<String>, usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Port 9 on loopback: nothing may be sent there, and nothing is.
    let model = Model::new("m", api, provider, "http://127.0.0.1:9");
    let mut options = StreamOptions::default();
    // Azure's Entra ID chain goes on to managed identity and the Azure CLI: neither may be
    // this machine's (IMDS at a closed port, no `az` on the PATH).
    for (k, v) in [
        ("TERN_AZURE_IMDS_HOST", "http://127.0.0.1:9"),
        ("PATH", "/nonexistent/tern-no-az"),
    ] {
        options.env.insert(k.into(), v.into());
    }
    let mut sink = Last::default();
    rt.block_on(run(&model, &Context::default(), &options, &mut sink));
    (sink.0, sink.1)
}

#[test]
fn a_missing_key_names_the_option_and_the_providers_variables() {
    for (api, provider) in [
        ("mistral-conversations", "mistral"),
        ("azure-openai-responses", "azure"),
    ] {
        let vars = catalog::env_api_key_vars(provider);
        if catalog::env_api_key(provider).is_some() {
            continue; // a key in this environment: nothing to report
        }
        let (message, events) = failure(api, provider);
        let message = message.unwrap();
        assert_eq!(events, 1, "{api}: only the error event");
        assert!(
            message.starts_with(&format!(
                "No API key for provider: {provider} (tried the apiKey option"
            )),
            "{message}"
        );
        for var in vars {
            assert!(message.contains(var), "{message} lacks {var}");
        }
    }
}

#[test]
fn a_provider_without_variables_names_only_the_option() {
    let (message, _) = failure("mistral-conversations", "self-hosted");
    assert_eq!(
        message.as_deref(),
        Some("No API key for provider: self-hosted (tried the apiKey option)")
    );
}
