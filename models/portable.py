"""Trained models in a portable form (ONNX), scored without scikit-learn or XGBoost.

`selector select` runs on every push.  Loading a skops model imports scikit-learn,
XGBoost and skops, seconds before anything is predicted; onnxruntime imports in a
fraction of that (``benchmarks/select_latency.py``; docs/performance.md).  So `selector train`
also writes each model it can convert as ONNX (skl2onnx, with onnxmltools' XGBoost
converter), and `select` scores with it.  ONNX is a protobuf graph of operators:
loading it runs no Python code, as with skops.

The scaling step stays in numpy, as scikit-learn computes it (float64, divided by the
stored maxima, kept in the ONNX file's metadata); only the classifier is ONNX, fed the
float32 rows that scikit-learn's trees and XGBoost would themselves compute on.  The
probabilities then agree to float32 rounding (about 1e-7).  A conversion is kept only
if it reproduces the estimator on the training inputs to within :data:`TOLERANCE`, and
a probability within :data:`BORDERLINE` of the operating point is scored again with
the skops model (``models.bundle.Bundle.positive_scores``): decisions are always the
estimator's own.  Perphecy's predictor and the effect bound get graphs written here
(`perphecy_onnx`, `effect_onnx`); the other models with no converter (the baselines, the
Platt-scaled SVM) are not converted; their bundles are scored through skops as before.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

TOLERANCE = 1e-5  # largest probability difference allowed on the training inputs
BORDERLINE = 1e-4  # an ONNX probability this close to the threshold is scored again exactly
SCALE_KEY = "selector.max_abs_scale"  # metadata: the MaxAbsScaler's divisors, as JSON
OPSET = {"": 17, "ai.onnx.ml": 3}


def export_onnx(estimator, X) -> bytes | None:
    """The ONNX form of a fitted (MaxAbsScaler, classifier) pipeline, or None when the
    classifier has no converter or the result drifts from the estimator on `X`, the
    training inputs (in the form the estimator was fitted on: a DataFrame)."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import MaxAbsScaler

    from perf_selector.models.effect import EffectBound
    from perf_selector.models.perphecy import PerphecyPredictor

    if isinstance(estimator, (PerphecyPredictor, EffectBound)):
        expected = _sklearn_scores(estimator, X)
        if expected is None or not len(X):
            return None
        try:
            model = perphecy_onnx(estimator) if isinstance(estimator, PerphecyPredictor) else effect_onnx(estimator)
        except Exception:  # skl2onnx raises many kinds for what it cannot convert
            return None
        scale = np.ones(X.shape[1])
    elif isinstance(estimator, Pipeline) and len(estimator.steps) == 2 and isinstance(estimator.steps[0][1], MaxAbsScaler):
        expected = _sklearn_scores(estimator, X)
        if expected is None or not len(X):
            return None
        try:
            model = _convert(estimator.steps[1][1], X.shape[1])
        except Exception:  # skl2onnx raises many kinds for what it cannot convert
            return None
        scale = estimator.steps[0][1].scale_
    else:
        return None  # the baselines: not worth a second format
    entry = model.metadata_props.add()
    entry.key, entry.value = SCALE_KEY, json.dumps(np.asarray(scale, dtype=float).tolist())
    data = model.SerializeToString()
    if not np.all(np.abs(PortableModel(data).positive_scores(np.asarray(X, dtype=float)) - expected) <= TOLERANCE):
        return None
    return data


def _convert(classifier, features: int):
    from skl2onnx import convert_sklearn, update_registered_converter
    from skl2onnx.common.data_types import FloatTensorType
    from skl2onnx.common.shape_calculator import calculate_linear_classifier_output_shapes
    from onnxmltools.convert.xgboost.operator_converters.XGBoost import convert_xgboost
    from xgboost import XGBClassifier

    from perf_selector.models.registry import BalancedXGBClassifier, MonotoneXGBClassifier

    for kind in (XGBClassifier, BalancedXGBClassifier, MonotoneXGBClassifier):
        update_registered_converter(
            kind, f"Selector{kind.__name__}", calculate_linear_classifier_output_shapes, convert_xgboost,
            options={"nocl": [True, False], "zipmap": [True, False, "columns"]},
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return convert_sklearn(
            classifier, initial_types=[("X", FloatTensorType([None, features]))],
            options={id(classifier): {"zipmap": False}}, target_opset=OPSET,
        )


def perphecy_onnx(predictor):
    """Perphecy's predictor as an ONNX graph: for each chosen (indicator, threshold), the ratio
    max(value, 0) / threshold (a threshold <= 0: infinite where value >= threshold, else 0);
    the largest ratio r over the pairs gives the probability r / (1 + r), 1 for an infinite r,
    as ``PerphecyPredictor.predict_proba`` computes it.  Outputs: label, probabilities (n, 2)."""
    from onnx import TensorProto, helper

    columns = [int(predictor.indicator_columns_[column]) for column, _ in predictor._pairs]
    thresholds = np.array([threshold for _, threshold in predictor._pairs], dtype=np.float32)
    features = int(predictor.n_features_in_)
    constant = helper.make_tensor
    nodes, initializers = [], [
        constant("columns", TensorProto.INT64, [len(columns)], columns),
        constant("thresholds", TensorProto.FLOAT, [len(columns)], thresholds.tolist()),
        constant("divisors", TensorProto.FLOAT, [len(columns)], np.where(thresholds > 0, thresholds, 1).tolist()),
        constant("positive_threshold", TensorProto.BOOL, [len(columns)], (thresholds > 0).tolist()),
        constant("zero", TensorProto.FLOAT, [], [0.0]), constant("one", TensorProto.FLOAT, [], [1.0]),
        constant("infinity", TensorProto.FLOAT, [], [np.inf]), constant("half", TensorProto.FLOAT, [], [0.5]),
    ]
    node = helper.make_node
    if columns:
        nodes += [
            node("Gather", ["X", "columns"], ["values"], axis=1),
            node("Where", ["values_nan", "zero", "values"], ["values_clean"]),  # NaN counts as 0, as in fit
            node("Relu", ["values_clean"], ["positive_values"]),
            node("Div", ["positive_values", "divisors"], ["ratios"]),
            node("GreaterOrEqual", ["values_clean", "thresholds"], ["reached"]),
            node("Where", ["reached", "infinity", "zero"], ["rule_ratios"]),
            node("Where", ["positive_threshold", "ratios", "rule_ratios"], ["pair_ratios"]),
            node("ReduceMax", ["pair_ratios"], ["ratio"], axes=[1], keepdims=1),
        ]
        nodes.insert(1, node("IsNaN", ["values"], ["values_nan"]))
    else:  # no change in training: the empty OR dismisses everything
        nodes += [node("ReduceMax", ["X"], ["any_value"], axes=[1], keepdims=1), node("Mul", ["any_value", "zero"], ["ratio"])]
    nodes += [
        node("Add", ["ratio", "one"], ["ratio_plus_one"]),
        node("Div", ["ratio", "ratio_plus_one"], ["finite_probability"]),
        node("IsInf", ["ratio"], ["infinite"]),
        node("Where", ["infinite", "one", "finite_probability"], ["positive"]),
        *_classifier_outputs("positive", "one", "half"),
    ]
    graph = helper.make_graph(nodes, "perphecy", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, features])],
                              _classifier_output_types(), initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET[""])])


def _classifier_outputs(positive: str, one: str, half: str) -> list:
    """The nodes that turn a positive-class probability (n, 1) into what a converted classifier
    outputs: `label` (int64, 1 where the probability is at least a half) and `probabilities` (n, 2)."""
    from onnx import TensorProto, helper

    return [
        helper.make_node("Sub", [one, positive], [f"{positive}_negative"]),
        helper.make_node("Concat", [f"{positive}_negative", positive], ["probabilities"], axis=1),
        helper.make_node("GreaterOrEqual", [positive, half], [f"{positive}_predicted"]),
        helper.make_node("Cast", [f"{positive}_predicted"], ["label"], to=TensorProto.INT64),
    ]


def _classifier_output_types() -> list:
    """The graph outputs that go with :func:`_classifier_outputs` (what PortableModel reads)."""
    from onnx import TensorProto, helper

    return [helper.make_tensor_value_info("label", TensorProto.INT64, [None, 1]),
            helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 2])]


def effect_onnx(model):
    """The effect bound as an ONNX graph: the quantile regressor (skl2onnx), then max(bound, 0)
    and the probability bound / (bound + min_effect), as ``EffectBound.predict_proba``.  NaN
    features are 0, as in fit.  Outputs: label, probabilities (n, 2)."""
    from onnx import TensorProto, helper
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType

    if model.min_effect <= 0:
        raise ValueError("a minimum effect of 0 has no probability form")
    features = int(model.n_features_in_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onnx_model = convert_sklearn(model.regressor_, initial_types=[("X_clean", FloatTensorType([None, features]))],
                                     target_opset=OPSET)
    graph = onnx_model.graph
    regression = graph.output[0].name
    node, constant = helper.make_node, helper.make_tensor
    graph.initializer.extend([
        constant("selector_zero", TensorProto.FLOAT, [], [0.0]), constant("selector_one", TensorProto.FLOAT, [], [1.0]),
        constant("selector_half", TensorProto.FLOAT, [], [0.5]),
        constant("selector_min_effect", TensorProto.FLOAT, [], [float(model.min_effect)]),
    ])
    cleaning = [node("IsNaN", ["X"], ["selector_nan"]), node("Where", ["selector_nan", "selector_zero", "X"], ["X_clean"])]
    for position, step in enumerate(cleaning):
        graph.node.insert(position, step)
    graph.node.extend([
        node("Relu", [regression], ["selector_bound"]),
        node("Add", ["selector_bound", "selector_min_effect"], ["selector_denominator"]),
        node("Div", ["selector_bound", "selector_denominator"], ["selector_positive"]),
        *_classifier_outputs("selector_positive", "selector_one", "selector_half"),
    ])
    del graph.input[:]
    graph.input.extend([helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, features])])
    del graph.output[:]
    graph.output.extend(_classifier_output_types())
    return onnx_model


def _sklearn_scores(estimator, X: np.ndarray) -> np.ndarray | None:
    from perf_selector.models.registry import positive_scores

    classes = list(estimator.classes_)
    if len(classes) != 2 or True not in classes and 1 not in classes:
        return None  # single-class models are not worth a second format
    return positive_scores(estimator, X)


class PortableModel:
    """An ONNX classifier: probability of the positive class for rows of features."""

    def __init__(self, model: bytes | Path) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # a handful of rows: threads cost more than they give
        options.log_severity_level = 3
        source = str(model) if isinstance(model, Path) else model
        self._session = onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        self._input = self._session.get_inputs()[0].name
        metadata = self._session.get_modelmeta().custom_metadata_map
        if SCALE_KEY not in metadata:
            raise ValueError(f"no {SCALE_KEY} in the model's metadata")
        self._scale = np.asarray(json.loads(metadata[SCALE_KEY]), dtype=float)

    def positive_scores(self, X) -> np.ndarray:
        rows = (np.asarray(X, dtype=float) / self._scale).astype(np.float32)  # as MaxAbsScaler, then the trees
        _, probabilities = self._session.run(None, {self._input: rows})
        return np.asarray(probabilities)[:, 1].astype(float)
