# syntax=docker/dockerfile:1
# The formsservice image for people with Docker: the same content as `make image` (which needs no Docker
# engine), built in two stages. One image runs every service and the operator:
#   docker build -t formsservice .            docker run formsservice forms -config /etc/formsservice/config.yaml
#   the operator: command /manager            (see config/manager/manager.yaml)
# `formsservice forms` runs as /formsservice-forms, the forms service built alone (hack/build.sh).
ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
COPY third_party/ third_party/
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=dev
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    LDFLAGS="-s -w -X main.version=${VERSION}" CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
      hack/build.sh /out -trimpath && \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags "-s -w" \
      -o /out/manager ./cmd/manager

# Static binaries need no libc: distroless/static brings CA certificates, tzdata and the nonroot user.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.title="formsservice" \
      org.opencontainers.image.description="Forms, sign-in (OAuth 2.0 / OpenID Connect) and health services, and their Kubernetes operator" \
      org.opencontainers.image.source="https://github.com/formsservice/formsservice" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/formsservice /out/formsservice-forms /out/manager /
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/formsservice"]
