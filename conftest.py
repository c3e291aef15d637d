"""Root test configuration: tests never pick up whatever plugins happen to be installed."""

import os

# Tests register the plugins they need (recall_kit.testing.registered_plugin); subprocess
# tests name the plugins they load in RECALL_KIT_LOAD_PLUGINS themselves.
os.environ["RECALL_KIT_LOAD_PLUGINS"] = ""
