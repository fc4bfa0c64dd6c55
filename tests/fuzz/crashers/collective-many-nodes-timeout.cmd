collective --cluster dgx-h100 --op all_reduce --min-bytes 1M --max-bytes 1M --nodes 10000
