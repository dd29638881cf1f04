//! Vertex AI (`POST .../publishers/google/models/{id}:streamGenerateContent?alt=sse`), the
//! `google-vertex` API: Gemini's request and stream, with Vertex's URLs and credentials.
//!
//! Credentials, as the reference looks for them: an API key (the options, else
//! `GOOGLE_CLOUD_API_KEY`), sent as `x-goog-api-key` to the model's base URL (when it names
//! no `{location}`) or to `https://aiplatform.googleapis.com`; without one, Application
//! Default Credentials ([`adc`]: a user's refresh token, a service account's key, workload
//! identity federation from a file, URL, executable or AWS, or the GCE metadata server) for a
//! project (`GOOGLE_CLOUD_PROJECT` / `GCLOUD_PROJECT`) and a location
//! (`GOOGLE_CLOUD_LOCATION`), sent as a bearer token to
//! `https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}`.

mod adc;
mod request;

/// The `google-vertex` API.
pub(crate) struct Vertex;
