# the controller's kmock fixtures, for the hostile tests of the controller's paths
from ..operator.controller.conftest import api, settings  # noqa: F401 - fixtures
