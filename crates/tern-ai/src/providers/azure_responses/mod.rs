//! Azure OpenAI Responses (`POST {baseUrl}/responses?api-version=...`, `stream: true`), the
//! `azure-openai-responses` API: the OpenAI Responses wire format with Azure's key header,
//! deployment names and API versions; the stream is read by the Responses mapper.
//!
//! Configuration, as the reference reads it: the base URL from `AZURE_OPENAI_BASE_URL`, else
//! `https://$AZURE_OPENAI_RESOURCE_NAME.openai.azure.com/openai/v1`, else the model's; the
//! deployment from `AZURE_OPENAI_DEPLOYMENT_NAME_MAP` (`model=deployment,...`), else the model
//! id; the API version from `AZURE_OPENAI_API_VERSION`, else `v1`; the key from the options
//! or `AZURE_OPENAI_API_KEY`, sent as `api-key`. Without a key, tern (not the reference)
//! sends a Microsoft Entra ID token as `Authorization: Bearer` ([`entra`]).

mod config;
mod entra;
mod request;

/// The `azure-openai-responses` API.
pub(crate) struct AzureResponses;
