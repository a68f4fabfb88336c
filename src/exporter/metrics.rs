//! The exported metrics, aggregated from the records the exporter sees:
//! a plain bounded struct, observed per score and turned into an OTLP
//! request (cumulative temporality) on each interval.
//!
//! - `toolscore.evaluation.score`: histogram of scores (errors have none),
//!   explicit bounds 0.1, 0.2, …, 1.0;
//! - `toolscore.evaluations`: monotonic sum of evaluations.
//!
//! Both by `gen_ai.evaluation.name` (evaluator ID) and
//! `toolscore.evaluation.result` (`pass`/`fail`/`error`, see
//! [`super::convert::score_label`]). Every revision of a trace counts: a
//! re-evaluation after late spans is another evaluation.

use std::collections::BTreeMap;
use std::sync::Arc;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Histogram, HistogramDataPoint, Metric, NumberDataPoint,
    ResourceMetrics, ScopeMetrics, Sum, metric, number_data_point,
};
use opentelemetry_proto::tonic::resource::v1::Resource;

use super::convert::{kv, scope, score_label, string};
use crate::store::Score;

pub const SCORE_HISTOGRAM: &str = "toolscore.evaluation.score";
pub const EVALUATIONS_COUNTER: &str = "toolscore.evaluations";
/// Upper bounds of the histogram buckets (inclusive, as OTLP defines them);
/// an 11th bucket takes anything above 1.0.
pub const BOUNDS: [f64; 10] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
/// Distinct (evaluator, result) attribute sets kept; observations of new
/// sets beyond it are dropped and counted.
pub const MAX_SERIES: usize = 10_000;

#[derive(Debug, Clone, Default, PartialEq)]
struct Series {
    evaluations: u64,
    scored: u64,
    sum: f64,
    min: f64,
    max: f64,
    buckets: [u64; BOUNDS.len() + 1],
}

/// Cumulative totals since `start_time` (unix nanos).
#[derive(Debug, Clone)]
pub struct MetricsAggregator {
    start_time: u64,
    max_series: usize,
    series: BTreeMap<(Arc<str>, &'static str), Series>,
}

impl MetricsAggregator {
    pub fn new(start_time: u64) -> MetricsAggregator {
        MetricsAggregator::with_max_series(start_time, MAX_SERIES)
    }

    pub fn with_max_series(start_time: u64, max_series: usize) -> MetricsAggregator {
        MetricsAggregator {
            start_time,
            max_series,
            series: BTreeMap::new(),
        }
    }

    /// Counts one evaluation; false when it was dropped at the series limit.
    pub fn observe(&mut self, score: &Score) -> bool {
        let key = (score.evaluator_id.clone(), score_label(&score.outcome));
        let full = self.series.len() >= self.max_series;
        let series = match self.series.get_mut(&key) {
            Some(series) => series,
            None if full => return false,
            None => self.series.entry(key).or_default(),
        };
        series.evaluations += 1;
        if let Some(v) = score.outcome.score.filter(|v| v.is_finite()) {
            if series.scored == 0 {
                (series.min, series.max) = (v, v);
            } else {
                series.min = series.min.min(v);
                series.max = series.max.max(v);
            }
            series.scored += 1;
            series.sum += v;
            let bucket = BOUNDS.iter().position(|b| v <= *b).unwrap_or(BOUNDS.len());
            series.buckets[bucket] += 1;
        }
        true
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// The totals so far as one request, stamped `now`; `None` before any
    /// observation.
    pub fn request(&self, resource: &Resource, now: u64) -> Option<ExportMetricsServiceRequest> {
        if self.series.is_empty() {
            return None;
        }
        let cumulative = AggregationTemporality::Cumulative as i32;
        let attrs = |evaluator: &str, result: &str| -> Vec<KeyValue> {
            vec![
                kv("gen_ai.evaluation.name", string(evaluator)),
                kv("toolscore.evaluation.result", string(result)),
            ]
        };
        let histogram_points = self
            .series
            .iter()
            .filter(|(_, s)| s.scored > 0)
            .map(|((evaluator, result), s)| HistogramDataPoint {
                attributes: attrs(evaluator, result),
                start_time_unix_nano: self.start_time,
                time_unix_nano: now,
                count: s.scored,
                sum: Some(s.sum),
                bucket_counts: s.buckets.to_vec(),
                explicit_bounds: BOUNDS.to_vec(),
                min: Some(s.min),
                max: Some(s.max),
                ..HistogramDataPoint::default()
            })
            .collect::<Vec<_>>();
        let count_points = self
            .series
            .iter()
            .map(|((evaluator, result), s)| NumberDataPoint {
                attributes: attrs(evaluator, result),
                start_time_unix_nano: self.start_time,
                time_unix_nano: now,
                value: Some(number_data_point::Value::AsInt(
                    i64::try_from(s.evaluations).unwrap_or(i64::MAX),
                )),
                ..NumberDataPoint::default()
            })
            .collect();
        let mut metrics = Vec::with_capacity(2);
        if !histogram_points.is_empty() {
            metrics.push(Metric {
                name: SCORE_HISTOGRAM.into(),
                description: "Evaluation scores, by evaluator and result".into(),
                unit: "1".into(),
                data: Some(metric::Data::Histogram(Histogram {
                    data_points: histogram_points,
                    aggregation_temporality: cumulative,
                })),
                ..Metric::default()
            });
        }
        metrics.push(Metric {
            name: EVALUATIONS_COUNTER.into(),
            description: "Evaluations, by evaluator and result".into(),
            unit: "{evaluation}".into(),
            data: Some(metric::Data::Sum(Sum {
                data_points: count_points,
                aggregation_temporality: cumulative,
                is_monotonic: true,
            })),
            ..Metric::default()
        });
        Some(ExportMetricsServiceRequest {
            resource_metrics: vec![ResourceMetrics {
                resource: Some(resource.clone()),
                scope_metrics: vec![ScopeMetrics {
                    scope: Some(scope()),
                    metrics,
                    ..ScopeMetrics::default()
                }],
                ..ResourceMetrics::default()
            }],
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value as Json;

    use super::*;
    use crate::evaluator::{EvaluatorType, Outcome};
    use crate::exporter::convert::resource;

    fn score(id: &str, outcome: Outcome) -> Score {
        Score {
            evaluator_id: id.into(),
            evaluator_type: EvaluatorType::Count,
            outcome: outcome.into(),
        }
    }

    fn data(req: &ExportMetricsServiceRequest) -> &[Metric] {
        &req.resource_metrics[0].scope_metrics[0].metrics
    }

    #[test]
    fn nothing_observed_nothing_sent() {
        assert!(
            MetricsAggregator::new(1)
                .request(&resource("t"), 2)
                .is_none()
        );
    }

    #[test]
    fn counts_and_buckets_by_evaluator_and_result() {
        let mut agg = MetricsAggregator::new(10);
        for v in [1.0, 1.0, 0.05, 0.1, 0.15, 0.95] {
            assert!(agg.observe(&score("a", Outcome::ok(v, Json::Null))));
        }
        agg.observe(&score("a", Outcome::error("x")));
        let req = agg.request(&resource("t"), 20).unwrap();
        let metrics = data(&req);
        let Some(metric::Data::Histogram(h)) = &metrics[0].data else {
            panic!("{metrics:?}")
        };
        assert_eq!(metrics[0].name, SCORE_HISTOGRAM);
        assert_eq!(
            h.aggregation_temporality,
            AggregationTemporality::Cumulative as i32
        );
        // BTreeMap order: ("a", "fail") then ("a", "pass"); the error series has no scores.
        assert_eq!(h.data_points.len(), 2);
        let fail = &h.data_points[0];
        assert_eq!(fail.count, 4);
        assert_eq!(fail.bucket_counts, vec![2, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0]);
        assert_eq!((fail.min, fail.max), (Some(0.05), Some(0.95)));
        assert_eq!((fail.start_time_unix_nano, fail.time_unix_nano), (10, 20));
        let pass = &h.data_points[1];
        assert_eq!(
            pass.bucket_counts[9], 2,
            "1.0 falls in the (0.9, 1.0] bucket"
        );
        let Some(metric::Data::Sum(sum)) = &metrics[1].data else {
            panic!("{metrics:?}")
        };
        assert_eq!(metrics[1].name, EVALUATIONS_COUNTER);
        assert!(sum.is_monotonic);
        let counts: Vec<_> = sum
            .data_points
            .iter()
            .map(|p| (p.attributes[1].value.clone(), p.value))
            .collect();
        assert_eq!(
            counts,
            vec![
                (
                    Some(string("error")),
                    Some(number_data_point::Value::AsInt(1))
                ),
                (
                    Some(string("fail")),
                    Some(number_data_point::Value::AsInt(4))
                ),
                (
                    Some(string("pass")),
                    Some(number_data_point::Value::AsInt(2))
                ),
            ]
        );
    }

    #[test]
    fn new_series_beyond_the_limit_are_dropped() {
        let mut agg = MetricsAggregator::with_max_series(0, 2);
        assert!(agg.observe(&score("a", Outcome::ok(1.0, Json::Null))));
        assert!(agg.observe(&score("b", Outcome::ok(1.0, Json::Null))));
        assert!(!agg.observe(&score("c", Outcome::ok(1.0, Json::Null))));
        assert!(
            agg.observe(&score("a", Outcome::ok(1.0, Json::Null))),
            "known series still count"
        );
    }
}
