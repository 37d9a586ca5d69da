"""``paddle.version``: the fluid release whose API fluidcompat provides."""

full_version = "1.8.5"
major = "1"
minor = "8"
patch = "5"
rc = "0"
istaged = True
commit = "fluidcompat"
with_mkl = "OFF"


def show():
    print("full_version:", full_version)
    print("major:", major)
    print("minor:", minor)
    print("patch:", patch)
    print("rc:", rc)


def mkl():
    return with_mkl
