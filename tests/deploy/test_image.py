"""deploy/image (the fixture of the other deploy tests): makes the Debian 12 base image
(deploy/base-image.sh: debootstrap, cached in the build directory) and builds
deploy/Containerfile into ZBSO_DEPLOY_IMAGE with podman, from the source tree. Records
the build time and the image size."""

import os
import time
import unittest

from deployutil import (BASE_IMAGE, SRC, build_dir, image, podman, record_figures,
                        require_tools, run)


class ImageTest(unittest.TestCase):
    def test_build(self):
        require_tools("podman", "debootstrap", "runc")
        cache = os.path.join(build_dir(), "deploy")
        # base-image.sh makes it only when it builds the base image, which a podman store
        # that already holds one skips; the build log goes there either way.
        os.makedirs(cache, exist_ok=True)
        t0 = time.monotonic()
        run([os.path.join(SRC, "deploy", "base-image.sh"), cache, BASE_IMAGE], timeout=900)
        base_s = time.monotonic() - t0
        old = podman("image", "inspect", "--format", "{{.Id}}", image(), check=False)
        old_id = old.stdout.strip() if old.returncode == 0 else None

        # --format docker keeps the HEALTHCHECK (OCI images have none); --network host for
        # apt-get in the RUN steps. The build stage compiles with ninja -j2.
        t0 = time.monotonic()
        p = podman("build", "--network", "host", "--format", "docker", "--layers",
                   "-f", os.path.join(SRC, "deploy", "Containerfile"), "-t", image(), SRC,
                   timeout=1500, check=False)
        build_s = time.monotonic() - t0
        log = os.path.join(cache, "image-build.log")
        with open(log, "w") as f:
            f.write(p.stdout + p.stderr)
        self.assertEqual(p.returncode, 0, f"podman build failed (log {log}):\n"
                         f"{(p.stdout + p.stderr)[-6000:]}")
        new_id = podman("image", "inspect", "--format", "{{.Id}}", image()).stdout.strip()
        if old_id and old_id != new_id:
            # The previous build's image (and its layers no other image uses) goes.
            podman("rmi", old_id, check=False)
        size = int(podman("image", "inspect", "--format", "{{.Size}}", image()).stdout)
        base = int(podman("image", "inspect", "--format", "{{.Size}}", BASE_IMAGE).stdout)
        record_figures("image", {
            "image": image(), "size_bytes": size, "size_mb": round(size / 1e6, 1),
            "base_size_mb": round(base / 1e6, 1),
            "added_to_base_mb": round((size - base) / 1e6, 1),
            "base_image_s": round(base_s, 1), "build_s": round(build_s, 1)})


if __name__ == "__main__":
    unittest.main()
