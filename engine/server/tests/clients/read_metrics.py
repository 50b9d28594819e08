"""Reads `rowdex serve --metrics` with the Prometheus Python client's OpenMetrics parser.

Usage: read_metrics.py URL

Prints one line per sample, `type name{label="value",...} value`, sorted; exits non-zero when
the endpoint does not answer with the OpenMetrics content type or the parser refuses its text.
"""

import sys
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families


def main() -> None:
    url = sys.argv[1]
    with urllib.request.urlopen(url, timeout=30) as response:
        content_type = response.headers.get("Content-Type", "")
        text = response.read().decode("utf-8")
    if not content_type.startswith("application/openmetrics-text"):
        sys.exit(f"unexpected content type {content_type!r}")
    lines = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{key}="{value}"' for key, value in sorted(sample.labels.items()))
            lines.append(f"{family.type} {sample.name}{{{labels}}} {sample.value}")
    print("\n".join(sorted(lines)))


if __name__ == "__main__":
    main()
