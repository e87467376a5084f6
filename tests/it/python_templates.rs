//! Runs the Python unit tests of the inserted code (templates/python) with the test venv.
