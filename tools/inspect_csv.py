"""Reading `matmem inspect --csv` files for the analysis scripts beside it (sort_heads.py, keep_discard_phases.py):
one line a drawn value, time,series,row,col,value; and a head's position in a weighting."""
import csv

COLUMNS = ["time", "series", "row", "col", "value"]


def rows(path, fail):
    """Each line of the file as (time, series, row, col, value); fail(text) names the file when it cannot be read
    or its columns are not inspect's."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != COLUMNS:
                fail(f"{path}: columns {reader.fieldnames}, not matmem inspect's {','.join(COLUMNS)}")
            for r in reader:
                yield int(r["time"]), r["series"], int(r["row"]), int(r["col"]), float(r["value"])
    except OSError as e:
        fail(f"{path}: {e.strerror}")


def most_weighted(weighting):
    """The slot a weighting ({slot: value}) puts most weight on, the lowest of equal ones: a head's position."""
    return max(weighting, key=lambda slot: (weighting[slot], -slot))
