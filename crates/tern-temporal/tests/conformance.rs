//! The conformance scenarios through the Temporal backend: every scenario of tern-agent's
//! suites (the public 55 and the project's own) runs as a session on one real dev server,
//! with a worker in this process running the scripted model and tools as activities. Each
//! must either give the reference's trace or be one the backend declines (`scope.rs` says
//! why; the crate README lists them); the set that passes is pinned, so losing one fails.

mod support;

#[path = "../examples/conformance_temporal/harness.rs"]
mod harness;

use std::path::{Path, PathBuf};

use support::dev_server::DevServer;

/// The scenarios that run through a session and give the reference's trace.
const PASSING: &[&str] = &[
    "01_single_text_reply",
    "02_read_tool_then_explain",
    "03_parallel_completion_order",
    "04_per_tool_sequential_forces_batch",
    "05_config_sequential",
    "06_unknown_tool",
    "07_schema_validation",
    "08_prepare_arguments",
    "09_before_block_reasons",
    "10_block_terminate_whole_batch",
    "11_block_terminate_mixed_batch",
    "12_tool_returns_terminate",
    "13_seed_block_repeated_calls",
    "14_after_override_content",
    "15_after_override_flags",
    "16_after_throws",
    "17_tool_throws",
    "18_tool_is_error_result",
    "19_updates_and_late_updates",
    "20_duration_presence",
    "21_length_stop_rejects_batch",
    "22_provider_error_hard_exit",
    "23_provider_aborted_response",
    "24_finish_turn_end",
    "25_finish_turn_continue_extra_request",
    "26_finish_turn_continue_with_tool_results",
    "27_seed_four_turn_budget",
    "28_steering_one_at_a_time",
    "29_steering_all_mode",
    "30_follow_up_after_stop",
    "31_steering_after_prepare_next_turn",
    "32_continue_empty_transcript",
    "33_continue_only_system",
    "34_continue_assistant_tail_steering",
    "35_continue_assistant_tail_follow_up",
    "36_continue_assistant_tail_nothing_queued",
    "37_continue_user_tail",
    "43_reset",
    "44_tool_set_change_between_runs",
    "45_system_message_replay",
    "46_transform_context_keep_last",
    "47_convert_to_llm_custom_roles",
    "48_prepare_request_model_swap",
    "49_run_failure_stream_throws",
    "50_listener_ordering",
    "51_run_tool_call_nested",
    "52_prompt_messages_final_only_and_set",
    "53_transform_context_throws",
    "54_tool_redefinition",
    "55_early_steering_and_reset_collapse",
    "p01_update_then_do",
    "p03_tool_result_without_content",
    "x02_thinking_usage",
    "x03_listeners_snapshot",
    "x05_keep_last_zero",
    "x07_prompt_with_system",
    "x08_continue_after_error",
    "x09_abort_variants",
    "x10_listener_delay_streaming",
    "x11_facts_matching",
    "y01_clear_all_queues_during_run",
    "y02_clear_steering_queue_only",
    "y03_clear_follow_up_queue_only",
    "y04_clear_queues_while_idle",
    "y06_wait_for_idle_when_idle",
    "y10_session_id_in_requests",
    "y12_prepare_request_context_replace",
    "y13_prepare_request_system_prompt",
    "y14_prepare_request_system_prompt_without_system",
    "y15_prepare_request_context_tools",
    "y16_prepare_next_turn_context_replace",
    "y17_prepare_next_turn_system_prompt_and_messages",
    "y18_before_tool_call_mutates_args",
    "y19_mutate_args_after_coercion_parallel",
    "y20_stream_throws_mid_stream",
    "y21_stream_throws_before_first_event",
    "y22_stream_throws_after_tool_turn",
    "y23_stream_ends_without_terminal_event",
    "y24_final_only_without_terminal_event",
    "y25_listener_unsubscribe_after",
    "y26_unsubscribe_from_trigger",
    "y27_unsubscribe_from_hook_and_idle",
    "y28_agent_without_model",
    "y29_agent_without_model_failure",
    "z01_start_again_mid_response",
    "z02_start_twice_then_next_prompt",
];

fn suites() -> Vec<(PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tern-agent/tests/conformance");
    vec![
        (root.join("scenarios"), root.join("expected")),
        (root.join("extra/scenarios"), root.join("extra/expected")),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scenarios_a_session_can_run_give_the_reference_traces() {
    let server = DevServer::start();
    let backend = harness::Backend::connect(&server.address)
        .await
        .expect("the dev server serves its namespace");
    let mut passed = Vec::new();
    let mut failed = Vec::new();
    for (scenarios, expected) in suites() {
        let mut files: Vec<_> = std::fs::read_dir(&scenarios)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", scenarios.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        for path in files {
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string();
            let read = |p: &Path| -> serde_json::Value {
                let text = std::fs::read_to_string(p)
                    .unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
                serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{} is not JSON: {e}", p.display()))
            };
            let scenario = read(&path);
            match backend.run(&scenario).await {
                Ok(trace) => {
                    let want = read(&expected.join(format!("{name}.json")));
                    if harness::compare::equal(&want, &trace) {
                        passed.push(name);
                    } else {
                        let diff = harness::compare::diff(&want, &trace);
                        failed.push(format!("{name}:\n  {}", diff.join("\n  ")));
                    }
                }
                Err(harness::RunError::Unsupported(_)) => {}
                Err(e) => failed.push(format!("{name}: {e}")),
            }
        }
    }
    assert!(
        failed.is_empty(),
        "scenarios failed:\n{}",
        failed.join("\n")
    );
    assert_eq!(passed, PASSING, "the scenarios that pass through Temporal");
}
