"""Typed errors of the estimator: each names what is missing and how to supply it."""


class EstimatorError(ValueError):
    """Base class: the estimator refuses rather than returning a silently wrong number."""


class MissingConfigField(EstimatorError):
    """A model config lacks a field the estimate needs (e.g. num_hidden_layers)."""

    def __init__(self, field: str, hint: str = ""):
        self.field = field
        msg = f"model config has no '{field}'"
        super().__init__(f"{msg}: {hint}" if hint else msg)


class InvalidConfigField(MissingConfigField):
    """A model config field holds what no model's config holds (1.5 layers, `true` heads, an
    infinite context): refused by name, as a missing one would be."""

    def __init__(self, field: str, value: object, expected: str):
        self.field = field
        EstimatorError.__init__(
            self, f"model config field '{field}' = {str(value)[:60]}: {expected}; not sized"
        )


class InvalidSettings(EstimatorError):
    """Engine settings that vLLM itself would reject or that cannot be sized."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class ImpossibleEstimate(EstimatorError):
    """A config whose sizes come out negative: no model vLLM could build."""


class UnknownModel(EstimatorError):
    """The model id is not in the catalog and no config was given."""

    def __init__(self, model: str):
        self.model = model
        super().__init__(
            f"unknown model '{model}': pass its config.json (--model-config FILE on the CLI; "
            "in a cluster, the model-config annotation or a model-configs ConfigMap: README, "
            "Annotations)"
        )
