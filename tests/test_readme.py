"""The README's example output is what `s2sad show` prints."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_readme_shows_the_real_generated_source():
    shown = subprocess.run([sys.executable, "-m", "s2sad", "show",
                            "examples/babysqrt.py:babysqrt"], cwd=ROOT, capture_output=True,
                           text=True, timeout=120).stdout
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    start = readme.index("```python\ndef babysqrt_vjp") + len("```python\n")
    assert readme[start:readme.index("```", start)] == shown
