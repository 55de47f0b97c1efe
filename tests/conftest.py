"""Shared by every test folder. pytest puts this folder on ``sys.path`` (rootdir conftest,
prepend import mode), so the helpers beside it (``cli_run``) import from any sub-folder."""
