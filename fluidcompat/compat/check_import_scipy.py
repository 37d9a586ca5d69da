"""``paddle.check_import_scipy``: fluid 1.8's check, on Windows, that scipy's DLLs load."""

from __future__ import annotations


def check_import_scipy(OsName):  # noqa: N803  (fluid's name)
    """On Windows (``OsName == 'nt'``), an ImportError with fluid's hint when scipy fails to load its DLLs;
    elsewhere nothing."""
    if OsName != "nt":
        return None
    try:
        import scipy.io  # noqa: F401
    except ImportError as e:
        if "DLL load failed" in str(e):
            raise ImportError(
                f"{e}\nplease download visual C++ Redistributable for vs 2015, "
                "https://www.microsoft.com/en-us/download/details.aspx?id=48145"
            ) from None
    return None
